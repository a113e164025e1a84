"""The position automaton of a match pattern: one state per occurrence, constraints on
the transitions (Glushkov's construction with the junctions of :mod:`dt.cer.pattern`).

Pipeline position: :class:`~dt.cer.pattern.MatchQuery` → **:class:`Automaton`** → the
match kernel's tables (:mod:`codegen.cer.tables`).

A *position* is one occurrence of :mod:`dt.cer.pattern`: a :class:`~dt.cer.pattern.Var`
node in one copy of each enclosing :class:`~dt.cer.pattern.Repeat` (a bounded
``Repeat`` is unrolled into ``hi`` copies, an unbounded one into ``max(lo, 1)`` copies,
the last looping), so a match is exactly a path of positions: the engine needs no
bookkeeping to tell matches apart. Each construct is one function returning a
:class:`_Fragment` — its first and last positions with the junction markers a token
stream crosses inside it before (after) them, whether it is nullable, and the
transitions it creates — as regex-automata compiles a construct to a fragment.

A :class:`Transition` p → q holds what the markers between two consecutive events of
a match say: its contiguity (the last junction's), its forbidden conditions (all of
them), the conditions q's event must not satisfy (a greedy repetition's exclusion
markers: :class:`_Exclusion`), the smallest :class:`~dt.cer.pattern.Gap` bound it lies
inside, and, per :class:`~dt.cer.pattern.Within` scope, whether it stays in the scope's
instance (*internal*: created inside the scope) or starts one (*enters*: created outside, q
inside). Two parses may link the same positions through different markers
(``plus(plus(a))``): the transitions are merged when one allows whatever the other
does (:func:`_dominates`); otherwise the pattern is refused (the engine would need to
tell the parses apart, which a path cannot).

Cost: positions = occurrences after unrolling (bounded by :data:`MAX_POSITIONS`),
transitions at most quadratic in them (bounded by :data:`MAX_TRANSITIONS`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum

from ..graphs import co_reachable
from .pattern import Alt, Contiguity, Gap, Junction, MatchQuery, Pattern, Repeat, Seq, Var, Within

__all__ = ["MAX_POSITIONS", "MAX_TRANSITIONS", "Automaton", "Position", "Scope",
           "ScopeStep", "Transition", "automaton"]

MAX_POSITIONS = 1024
"""At most this many positions after unrolling bounded repetitions."""

MAX_TRANSITIONS = 16384
"""At most this many transitions."""

_RANK = {Contiguity.STRICT: 0, Contiguity.NEXT: 1, Contiguity.ANY: 2}
"""Strict allows fewer pairs than next, next fewer than any."""


class ScopeStep(Enum):
    """What a transition does to one :class:`~dt.cer.pattern.Within` scope."""

    NONE = 0
    INTERNAL = 1
    ENTERS = 2


@dataclass(frozen=True, slots=True)
class Scope:
    """A :class:`~dt.cer.pattern.Within` instance bound: last − first < ``duration``."""

    duration: int


@dataclass(frozen=True, slots=True)
class Position:
    """One occurrence: its variable, condition, the scopes it lies in, and its identity
    (the ``Var`` node's path from the root, then each enclosing ``Repeat``'s copy)."""

    name: str
    cond: int
    scopes: frozenset[int]
    occurrence: tuple[tuple[int, ...], tuple[int, ...]]


@dataclass(frozen=True, slots=True)
class Transition:
    """p → q with the constraints on two consecutive events of a match."""

    source: int
    target: int
    contiguity: Contiguity
    forbid: frozenset[int]
    gap: int | None
    steps: tuple[ScopeStep, ...]
    exclude: frozenset[int] = frozenset()


@dataclass(frozen=True, slots=True)
class Automaton:
    """Positions, the scopes, the initial and final positions, the transitions.

    ``whole`` is the scope of the query's own ``within`` (None without one): it holds
    every position, so its instance is the match."""

    positions: tuple[Position, ...]
    scopes: tuple[Scope, ...]
    initial: tuple[int, ...]
    final: tuple[int, ...]
    transitions: tuple[Transition, ...]
    whole: int | None = None


@dataclass(frozen=True, slots=True)
class _Exclusion:
    """A greedy repetition's exclusion marker: the next event satisfies none of
    ``conditions`` (no contiguity, no forbid: :mod:`dt.cer.pattern`)."""

    conditions: frozenset[int]


_Markers = tuple[Junction | _Exclusion, ...]


@dataclass(slots=True)
class _Fragment:
    """A construct's first and last positions with the markers crossed inside it before
    (after) them, and the markers of each of its empty parses (none: not nullable)."""

    first: list[tuple[int, _Markers]]
    last: list[tuple[int, _Markers]]
    empty: list[_Markers]

    @property
    def nullable(self) -> bool:
        return bool(self.empty)


@dataclass(slots=True)
class _Builder:
    """The mutable state of one construction; :meth:`freeze` makes the automaton."""

    positions: list[Position] = field(default_factory=list)
    scopes: list[Scope] = field(default_factory=list)
    transitions: dict[tuple[int, int], list[tuple[_Markers, _Context]]] = field(
        default_factory=dict)

    def link(self, last: Sequence[tuple[int, _Markers]], middle: _Markers,
             first: Sequence[tuple[int, _Markers]], ctx: _Context) -> None:
        """Transitions from ``last`` to ``first`` through ``middle``, created by a node
        in the context ``ctx``."""
        for p, exit_markers in last:
            for q, entry_markers in first:
                self._add(p, q, (*exit_markers, *middle, *entry_markers), ctx)

    def _add(self, p: int, q: int, markers: _Markers, ctx: _Context) -> None:
        self.transitions.setdefault((p, q), []).append((markers, ctx))

    def _transition(self, p: int, q: int, markers: _Markers, ctx: _Context) -> Transition:
        """p → q through ``markers``, created in ``ctx`` (every scope known by now)."""
        steps = tuple(
            ScopeStep.INTERNAL if s in ctx.scopes
            else ScopeStep.ENTERS if s in self.positions[q].scopes
            else ScopeStep.NONE
            for s in range(len(self.scopes)))
        junctions = [m for m in markers if isinstance(m, Junction)]
        return Transition(p, q, junctions[-1].contiguity,
                          frozenset(c for m in junctions for c in m.forbid), ctx.gap, steps,
                          frozenset(c for m in markers if isinstance(m, _Exclusion)
                                    for c in m.conditions))

    def freeze(self, root: _Fragment, whole: int | None) -> Automaton:
        # a transition that excludes its own target's condition never fires: dropped,
        # with the positions from which no match can then end (no partial match waits
        # there: timeouts report only what may still complete)
        merged = [t for t in (_merge([self._transition(p, q, *made) for made in ts],
                                     self.positions)
                              for (p, q), ts in self.transitions.items())
                  if self.positions[t.target].cond not in t.exclude]
        if len(merged) > MAX_TRANSITIONS:
            raise ValueError(f"the pattern has {len(merged)} transitions, more than "
                             f"{MAX_TRANSITIONS}: bound its repetitions")
        final = {p for p, _ in root.last}
        live = _coreachable(final, merged)
        return Automaton(tuple(self.positions), tuple(self.scopes),
                         tuple(sorted({q for q, _ in root.first} & live)), tuple(sorted(final)),
                         tuple(sorted((t for t in merged if t.target in live),
                                      key=lambda t: (t.target, t.source))), whole)


def _coreachable(final: set[int], transitions: Sequence[Transition]) -> set[int]:
    """The positions from which a final one can be reached."""
    return co_reachable(final, ((t.source, t.target) for t in transitions))


def automaton(query: MatchQuery) -> Automaton:
    """The position automaton of ``query``'s pattern (its ``within`` as an outer scope).

    >>> from dt.cer.pattern import Junction, MatchQuery, Repeat, Seq, Var
    >>> a, b = Var("a", 0), Var("b", 1)
    >>> auto = automaton(MatchQuery(Seq((a, Repeat(b, 1, None)), (Junction(),))))
    >>> [(t.source, t.target) for t in auto.transitions], auto.initial, auto.final
    ([(0, 1), (1, 1)], (0,), (1,))
    """
    builder = _Builder()
    pattern: Pattern = query.pattern
    whole = None
    if query.within is not None:
        pattern, whole = Within(pattern, query.within), 0
    root = _compile(builder, pattern, _Context((), (), frozenset(), None))
    if len(builder.positions) > MAX_POSITIONS:
        raise ValueError(f"the pattern has {len(builder.positions)} positions after "
                         f"unrolling its repetitions, more than {MAX_POSITIONS}")
    return builder.freeze(root, whole)


@dataclass(frozen=True, slots=True)
class _Context:
    """Where a node sits: its tree path, its Repeat copies, the Within scopes around it
    and the tightest Gap bound around it."""

    path: tuple[int, ...]
    copies: tuple[int, ...]
    scopes: frozenset[int]
    gap: int | None

    def child(self, i: int) -> _Context:
        return _Context((*self.path, i), self.copies, self.scopes, self.gap)


def _compile(b: _Builder, p: Pattern, ctx: _Context) -> _Fragment:
    """The fragment of ``p`` in the context ``ctx``."""
    if len(b.positions) > MAX_POSITIONS:
        raise ValueError(f"the pattern has more than {MAX_POSITIONS} positions after "
                         "unrolling its repetitions")
    if isinstance(p, Var):
        b.positions.append(Position(p.name, p.cond, ctx.scopes, (ctx.path, ctx.copies)))
        q = len(b.positions) - 1
        return _Fragment([(q, ())], [(q, ())], [])
    if isinstance(p, Seq):
        return _seq(b, p, ctx)
    if isinstance(p, Alt):
        parts = [_compile(b, c, ctx.child(i)) for i, c in enumerate(p.parts)]
        return _Fragment([x for f in parts for x in f.first], [x for f in parts for x in f.last],
                         _distinct([m for f in parts for m in f.empty]))
    if isinstance(p, Repeat):
        return _repeat(b, p, ctx)
    if isinstance(p, Gap):
        gap = p.duration if ctx.gap is None else min(ctx.gap, p.duration)
        inner = _Context((*ctx.path, 0), ctx.copies, ctx.scopes, gap)
        return _compile(b, p.body, inner)
    assert isinstance(p, Within), f"not a pattern: {p!r}"
    b.scopes.append(Scope(p.duration))
    inner = _Context((*ctx.path, 0), ctx.copies, ctx.scopes | {len(b.scopes) - 1}, ctx.gap)
    return _compile(b, p.body, inner)


def _seq(b: _Builder, p: Seq, ctx: _Context) -> _Fragment:
    """A non-empty Seq's tokens carry every junction between consecutive parts, around
    empty parts too: the markers before a part's first event (after its last) are those
    of the empty parts before (after) it, with those parts' own (exclusion) markers."""
    parts = [_compile(b, c, ctx.child(i)) for i, c in enumerate(p.parts)]
    first: list[tuple[int, _Markers]] = []
    crossed: list[_Markers] = [()]
    for i, f in enumerate(parts):
        first += [(q, (*c, *m)) for c in crossed for q, m in f.first]
        if not f.nullable or i == len(parts) - 1:
            break
        crossed = _distinct([(*c, *e, p.junctions[i]) for c in crossed for e in f.empty])
    last: list[tuple[int, _Markers]] = []
    crossed = [()]
    for i in range(len(parts) - 1, -1, -1):
        last += [(q, (*m, *c)) for q, m in parts[i].last for c in crossed]
        if not parts[i].nullable or i == 0:
            break
        crossed = _distinct([(p.junctions[i - 1], *e, *c) for e in parts[i].empty
                             for c in crossed])
    for i, left in enumerate(parts):
        middle: list[_Markers] = [()]
        for j in range(i + 1, len(parts)):
            middle = [(*m, p.junctions[j - 1]) for m in middle]
            for m in middle:
                b.link(left.last, m, parts[j].first, ctx)
            if not parts[j].nullable:
                break
            middle = _distinct([(*m, *e) for m in middle for e in parts[j].empty])
    empty: list[_Markers] = [()]
    for f in parts:
        empty = _distinct([_excluding((*x, *e)) for x in empty for e in f.empty])
    return _Fragment(first, last, empty)


def _repeat(b: _Builder, p: Repeat, ctx: _Context) -> _Fragment:
    """Copies 1..hi (bounded) or 1..max(lo, 1), the last looping (unbounded); a match
    may leave after copy r once r iterations are enough (r ≥ lo, or any r ≥ 1 when the
    body is nullable: its empty iterations are not counted). A greedy repetition leaves
    with an exclusion marker while it could iterate again (r < hi), and leaves one when
    empty."""
    n = p.hi if p.hi is not None else max(p.lo, 1)
    bodies = [_compile(b, p.body, _Context((*ctx.path, 0), (*ctx.copies, r), ctx.scopes, ctx.gap))
              for r in range(1, n + 1)]
    enough = 1 if bodies[0].nullable else max(p.lo, 1)
    for r in range(n - 1):
        b.link(bodies[r].last, (p.loop,), bodies[r + 1].first, ctx)
    if p.hi is None:
        b.link(bodies[-1].last, (p.loop,), bodies[-1].first, ctx)
    exclusion: _Markers = (_Exclusion(p.exclude),) if p.greedy else ()
    last = [(q, (*m, *exclusion) if p.hi is None or r + 1 < p.hi else m)
            for r in range(enough - 1, n) for q, m in bodies[r].last]
    return _Fragment(bodies[0].first, last,
                     [exclusion] if p.lo == 0 or bodies[0].nullable else [])


def _distinct(alternatives: list[_Markers]) -> list[_Markers]:
    """The alternatives once each, in order."""
    return list(dict.fromkeys(alternatives))


def _excluding(markers: _Markers) -> _Markers:
    """An empty parse's exclusion markers as one (an empty parse has no junctions)."""
    conditions = frozenset(c for m in markers if isinstance(m, _Exclusion) for c in m.conditions)
    return (_Exclusion(conditions),) if conditions else ()


def _dominates(a: Transition, b: Transition) -> bool:
    """Whether every pair of events ``b`` allows, ``a`` allows too."""
    return (a.steps == b.steps and _RANK[a.contiguity] >= _RANK[b.contiguity]
            and a.forbid <= b.forbid and a.exclude <= b.exclude
            and (a.gap is None or (b.gap is not None and a.gap >= b.gap)))


def _merge(ts: list[Transition], positions: Sequence[Position]) -> Transition:
    """The one transition allowing what every parse linking p and q allows."""
    for t in ts:
        if all(_dominates(t, u) for u in ts):
            return t
    p, q = positions[ts[0].source], positions[ts[0].target]
    raise ValueError(f"ambiguous pattern: {p.name} then {q.name} can be read through "
                     "different junctions (contiguity, not, gap, within or greedy) of which none "
                     "allows all the others allow; write the pattern without nesting "
                     "those repetitions")
